"""Card data protection: encryption of PANs and CVVs at rest, and card fingerprints."""
