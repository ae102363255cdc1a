"""The attention viewer (``headstats view``, ``hs.view``): a model view of every head, a head view with a colour
key, a heat map and a sieve grid of any input, one offline HTML file (:mod:`~headstats.report.viewer.page`), from
the page data of :mod:`~headstats.report.viewer.payload` and, beside a run, its statistics
(:mod:`~headstats.report.viewer.stats`)."""
