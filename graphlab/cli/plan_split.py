"""`plan`'s words for vLLM 0.34.0, which counts decode graphs in requests per query length and
sizes the prefill graphs apart (`VllmConfig._split_cudagraph_capture_sizes`)."""

from __future__ import annotations


def _requests(tokens, q: int) -> str:
    return ", ".join(str(n // q) for n in tokens)


def split_lines(result, d: dict) -> list[str]:
    """The plan's and the default's decode graphs in requests at q = 1 + k (their tokens beside)
    and what becomes of the prefill graphs."""
    cfg, split = result.config, result.split
    q, default_decode = cfg.decode_query_len, result.default_full_sizes
    prefill = d["default_capture_sizes"]
    legacy = cfg.cudagraph_capture_sizes is not None or cfg.max_cudagraph_capture_size is not None
    lines = [
        f"decode graphs (uniform decode steps of q = 1+k = {q} tokens per request; vLLM 0.34.0 "
        "sizes them in requests, decode_cudagraph_capture_request_sizes):",
        f"  plan   : {len(d['capture_sizes'])} graphs of {_requests(d['capture_sizes'], q)} "
        f"requests ({', '.join(map(str, d['capture_sizes']))} tokens)",
        f"  default: {len(default_decode)} graphs of {_requests(default_decode, q)} requests "
        f"({', '.join(map(str, default_decode))} tokens)",
    ]
    kept = split.compilation.get("prefill_cudagraph_capture_token_sizes")
    if prefill and not legacy:
        lines.append(
            f"prefill graphs (every other batch, by token count): the flag leaves the "
            f"{len(prefill)} up to {prefill[-1]} tokens as they are"
        )
    elif kept:
        lines.append(
            f"prefill graphs: the deprecated capture settings set them; the flag keeps "
            f"their {len(kept)} sizes up to {kept[-1]} tokens as prefill_cudagraph_capture_token_"
            "sizes (vLLM refuses the deprecated settings beside the new ones)"
        )
    return lines
