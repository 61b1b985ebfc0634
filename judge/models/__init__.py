"""Models that ship inside PyPI wheels (located, assembled from parts, checksummed), with their measured
figures."""
