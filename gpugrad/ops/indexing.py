"""(to be filled) indexing ops."""
__all__ = []
TENSOR_METHODS = {}
