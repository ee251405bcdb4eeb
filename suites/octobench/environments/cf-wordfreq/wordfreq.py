"""Word frequencies."""
import re
from collections import Counter


def top_words(text: str, n: int = 3) -> list[tuple[str, int]]:
    """Return the n most common lower-case words of text."""
    words = re.findall(r"[a-z']+", text.lower())
    return Counter(words).most_common(n)
