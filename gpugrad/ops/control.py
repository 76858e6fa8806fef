"""(to be filled) control ops."""
__all__ = []
TENSOR_METHODS = {}
