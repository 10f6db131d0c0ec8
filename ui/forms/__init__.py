"""Forms and panels the pages draw: the new-run forms (Scoring), the gold keys, the live view and the quality
settings (Live campaign), the New campaign form and a campaign's sections (Campaigns), and "why this score" under a
pair (Review, Disagreements, Pairs)."""
