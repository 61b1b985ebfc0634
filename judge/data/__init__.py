"""The data model: turns and items (what is judged), qualities and their scales, pairs of replies, and the
views of an item its readers share (the other replies to a context, a reply that copies a reference)."""
