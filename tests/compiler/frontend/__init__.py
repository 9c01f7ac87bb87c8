"""Tests of compiler/frontend."""
