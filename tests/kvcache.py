"""Snapshot and restore of a model's KV cache, so two runners can start a step from one state."""


def snapshot(model):
    """Copies of every layer's (K, V) cache."""
    return [(k.clone(), v.clone()) for k, v in model.kv_cache()]


def restore(model, snap):
    """Write a snapshot back into the model's cache tensors, in place."""
    for (k, v), (k0, v0) in zip(model.kv_cache(), snap):
        k.copy_(k0)
        v.copy_(v0)
