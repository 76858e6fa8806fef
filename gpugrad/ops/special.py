"""(to be filled) special ops."""
__all__ = []
TENSOR_METHODS = {}
