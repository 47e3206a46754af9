"""AmbigNQ (Min et al., 2020): closed-book answering of possibly ambiguous open-domain questions,
every plausible answer with a disambiguated question."""
