"""compiler package."""
