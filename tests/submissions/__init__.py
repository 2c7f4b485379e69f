"""Fixture submissions for ``course autograde``: a small assignment and a catalogue of honest, wrong and hostile answers."""
