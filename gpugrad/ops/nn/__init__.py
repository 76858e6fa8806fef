"""Network ops: convolution, pooling, resizing, normalization, dropout and embedding, attention."""
