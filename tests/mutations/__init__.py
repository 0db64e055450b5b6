"""The mutation check: deliberate defects the test suite of ``make test`` must catch.

``make test-mutations`` (``python -m tests.mutations``) applies each defect of
:mod:`tests.mutations.defects` alone to a scratch copy of the checkout and runs the tests there
(:mod:`tests.mutations.runner`); ``tests/test_mutations.py`` keeps the defects from rotting.
"""
