"""Self-notes: first-person notes about herself, their heat, and the private-data guard."""
