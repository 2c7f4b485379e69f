"""Publishing the course: release, build, execution, provenance, slides, samples and training runs."""
