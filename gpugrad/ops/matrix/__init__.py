"""Matrix ops: products and structure, linear algebra and its decompositions, the dense layer."""
