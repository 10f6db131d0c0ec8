"""Forms and panels the pages draw: the new-run forms (Scoring), the gold keys, the live view and the quality
settings (Live campaign), the New campaign form and a campaign's sections (Campaigns), the labelling view's parts
(an annotator's link), a pair file read and imported (Import), the aggregation and the publish form (Export), the
reviewer's decision (Review), the benchmark's forms (Scorecard), and "why this score" under a pair (Review,
Disagreements, Pairs)."""
