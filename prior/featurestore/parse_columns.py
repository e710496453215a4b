"""The columns of a stored parse record, and those of them a parses segment may lack.

A build has spaCy make only the annotations its features read (`prior.pipeline.parsers.annotations`),
so a parses segment may hold words, heads and relations without some of `ANNOTATIONS`: its
catalog record's ``annotations`` lists those it holds (a record without that field holds them
all), and it stores the others as nulls.
"""

from __future__ import annotations

#: the columns of a parse record (one list per sentence each)
PARSE_COLUMNS = ("words", "lemmas", "upos", "tags", "heads", "rels", "ents")
#: the columns a parses segment may lack
ANNOTATIONS = ("lemmas", "upos", "tags", "ents")
