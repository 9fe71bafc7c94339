"""Trust: provenance, why, check, doctor, forget."""
