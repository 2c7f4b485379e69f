"""The instructor's tooling behind the ``course`` command. Notebooks never import this package."""
