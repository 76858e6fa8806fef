"""(to be filled) losses ops."""
__all__ = []
TENSOR_METHODS = {}
