"""``judge label``: people rate items in the browser, one label at a time, into a labels file
(:mod:`judge.records.labels`).

:mod:`.order` draws the order items are shown in (uniform at random, or weighted by the judge's
uncertainty, each item's probability recorded); :mod:`.desk` keeps who labelled what and writes each
label at once; :mod:`.setup` opens a desk from the command's inputs; :mod:`.app` is the page and its
server (the viewer's, with a few routes); :mod:`.agreement` reports how far raters agree; :mod:`.ratings`
lets other commands use labels as the human ratings of the items they name.
"""
