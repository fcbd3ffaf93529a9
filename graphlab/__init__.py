"""graphlab: CUDA graphs and speculative decoding in LLM serving, measured on a small Llama."""

from graphlab.errors import GraphlabError

__version__ = "0.1.0"
__all__ = ["GraphlabError", "__version__"]
