"""Facts about the person: staged from a real turn, approved or retired by a person."""
