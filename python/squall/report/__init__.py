"""What a run says: the console's summaries and live line, Locust's tables, CSV and JSON, number formats.
Below `squall.web` (whose dashboard serves the CSV downloads) and `squall.outputs` (which writes the
files a run asks for)."""
