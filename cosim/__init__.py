"""cosim package."""
