"""Forms and panels more than one page draws: the new-run forms (Scoring), the gold keys (Live campaign), and
"why this score" under a pair (Review, Disagreements, Pairs)."""
