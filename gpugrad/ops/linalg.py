"""(to be filled) linalg ops."""
__all__ = []
TENSOR_METHODS = {}
