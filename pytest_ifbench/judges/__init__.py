"""LLM judges: the checklist judge over replies and the three-state judge over agent transcripts."""
