""":class:`RunTables`: every table of a run, each with its declared spec; written, read back and checked here."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import pandas as pd

from headstats.tables.declared import STUDY, TABLES, TableSpec, table_spec


def write_table(frame: pd.DataFrame, folder: Path, name: str, *, csv: bool = True, parquet: bool = True) -> None:
    """Write ``name.parquet`` and/or ``name.csv`` (no index; the CSV's text cells
    :func:`headstats.tables.schemas.spreadsheet_safe`)."""
    if parquet:
        frame.to_parquet(folder / f"{name}.parquet", index=False)
    if csv:
        from headstats.tables.schemas import spreadsheet_safe

        spreadsheet_safe(frame).to_csv(folder / f"{name}.csv", index=False)


class RunTables(Mapping[str, pd.DataFrame]):
    """The tables of a run, by file name without suffix (``"roles"``, ``"compare_paired_tests"``,
    ``"dependency_table"``), each owned by the study or an analysis and described by its declared
    :class:`~headstats.tables.declared.TableSpec` (:data:`~headstats.tables.declared.TABLES`).

    A mapping: ``tables["roles"]`` or ``tables[ROLES]`` (a declared spec) gives the frame. What the study hands
    the claims (:func:`headstats.stats.claims.evaluate_claims`), the report and the user (``StudyResult.tables``,
    ``hs.open_run``); :meth:`write` writes each table to the files its spec declares and :meth:`read` reads a run
    folder back, checked against the schemas its manifest recorded.
    """

    def __init__(self, frames: Mapping[str, pd.DataFrame] | None = None, *, owner: str = STUDY) -> None:
        self._frames: dict[str, pd.DataFrame] = {}
        self._owners: dict[str, str] = {}
        self._order: list[str] = []  # the owners in the order they were added (an analysis without a table too)
        if frames:
            self.add(owner, frames)

    # ------------------------------------------------------------------ the mapping
    @staticmethod
    def _name(key: str | TableSpec) -> str:
        return key.name if isinstance(key, TableSpec) else key

    def __getitem__(self, key: str | TableSpec) -> pd.DataFrame:
        return self._frames[self._name(key)]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, (str, TableSpec)) and self._name(key) in self._frames

    def __iter__(self) -> Iterator[str]:
        return iter(self._frames)

    def __len__(self) -> int:
        return len(self._frames)

    def __repr__(self) -> str:
        return f"RunTables({', '.join(self._frames)})"

    # ------------------------------------------------------------------ building
    def add(self, owner: str, frames: Mapping[str, pd.DataFrame]) -> "RunTables":
        """Add ``owner``'s tables, each by its name among its owner's (a key declared with another file name, as
        ``paired_tests`` for the file ``compare_paired_tests``, becomes that file); a table of the same file is
        replaced. Returns self."""
        files = {(spec.owner, spec.key): name for name, spec in TABLES.items() if spec.owner == owner}
        if owner not in self._order:
            self._order.append(owner)
        for key, frame in frames.items():
            name = files.get((owner, key), key)
            self._frames[name] = frame
            self._owners[name] = owner
        return self

    def replaced(self, frames: Mapping[str, pd.DataFrame]) -> "RunTables":
        """A copy with ``frames`` (file name -> frame) in place of the tables of the same name (new ones the
        study's)."""
        out = self.without()
        for name, frame in frames.items():
            out._frames[name] = frame
            out._owners.setdefault(name, self.owner(name))
        return out

    def without(self, *names: str | TableSpec) -> "RunTables":
        """A copy without the tables ``names``."""
        drop = {self._name(n) for n in names}
        out = RunTables()
        out._frames = {n: f for n, f in self._frames.items() if n not in drop}
        out._owners = {n: o for n, o in self._owners.items() if n not in drop}
        out._order = list(self._order)
        return out

    # ------------------------------------------------------------------ what each table is
    def owner(self, name: str | TableSpec) -> str:
        """Who writes the table: ``"study"`` or an analysis."""
        name = self._name(name)
        if name in self._owners:
            return self._owners[name]
        return TABLES.get(name).owner if name in TABLES else STUDY

    def spec(self, name: str | TableSpec) -> TableSpec:
        """The table's declared spec (a generic one for a table its owner did not declare)."""
        name = self._name(name)
        return TABLES.get(name) if name in TABLES else table_spec(name, self.owner(name))

    def describe(self, name: str | TableSpec) -> str:
        """What the table holds, in one line."""
        return self.spec(name).description

    def of(self, owner: str) -> dict[str, pd.DataFrame]:
        """``owner``'s tables, each by its name among its owner's (its declared key, e.g. without a files'
        prefix)."""
        return {self.spec(name).key: frame for name, frame in self._frames.items() if self.owner(name) == owner}

    def analyses(self) -> dict[str, dict[str, pd.DataFrame]]:
        """Each analysis' tables, the analyses in the order their first table was added."""
        out: dict[str, dict[str, pd.DataFrame]] = {o: {} for o in self._order if o != STUDY}
        for name, frame in self._frames.items():
            owner = self.owner(name)
            if owner != STUDY:
                out.setdefault(owner, {})[name] = frame
        return out

    def missing_columns(self) -> dict[str, list[str]]:
        """Table -> the columns its spec declares that it lacks (only tables that lack some)."""
        out = {}
        for name, frame in self._frames.items():
            missing = [c for c in self.spec(name).columns if c not in frame.columns]
            if missing:
                out[name] = missing
        return out

    # ------------------------------------------------------------------ files
    def write(self, folder: Path) -> list[str]:
        """Write every table into ``folder`` in the formats its spec declares (a CSV's text cells spreadsheet-safe;
        a table declared with no format is not written); returns the files written."""
        written = []
        for name, frame in self._frames.items():
            formats = self.spec(name).formats
            if formats:
                write_table(frame, Path(folder), name, csv="csv" in formats, parquet="parquet" in formats)
                written += [f"{name}.{suffix}" for suffix in formats]
        return written

    @classmethod
    def read(cls, run: Path, *, required: Iterable[str | tuple[str, ...]] = ()) -> tuple["RunTables", dict]:
        """The tables of a finished run folder and its manifest. The folder may come from anyone: it is checked
        first (:func:`headstats.tables.schemas.check_run_folder`: the manifest's paths, every table against the
        schema the run recorded), and only the tables its manifest lists are read (each table with a CSV; from its
        Parquet file where the run wrote both). A table no registered analysis declares keeps the owner the
        manifest's ``analysis_tables`` records (an analysis not imported here), else the study's.

        Raises
        ------
        DamagedRunError, OutputError
            One line naming the file and what is wrong.
        """
        from headstats.tables.schemas import check_run_folder, read_table_file, run_tables

        run = Path(run)
        manifest = check_run_folder(run, required=required)
        present = set(run_tables(run, manifest))
        recorded = manifest.get("analysis_tables")
        recorded = recorded if isinstance(recorded, dict) else {}
        listed = [(str(owner), name) for owner, names in recorded.items() if isinstance(names, list)
                  for name in names if isinstance(name, str) and f"{name}.csv" in present]
        # a table with a CSV; or one declared with a CSV whose Parquet file alone is left (tests.parquet)
        stems = sorted({f.removesuffix(".csv") for f in present if f.endswith(".csv")}
                       | {f.removesuffix(".parquet") for f in present if f.endswith(".parquet")
                          and f.removesuffix(".parquet") in TABLES
                          and "csv" in TABLES.get(f.removesuffix(".parquet")).formats})
        order = [n for n in stems if n not in {name for _, name in listed}] + [name for _, name in listed]
        owners = dict((name, owner) for owner, name in listed)
        out = cls()
        out._order = [str(owner) for owner in recorded]
        for name in order:
            parquet = f"{name}.parquet" in present
            out._frames[name] = read_table_file(run / (f"{name}.parquet" if parquet else f"{name}.csv"))
            out._owners[name] = TABLES.get(name).owner if name in TABLES else owners.get(name, STUDY)
        return out, manifest

    def recorded_owners(self) -> dict[str, list[str]]:
        """Analysis -> its tables, as the manifest records them (``analysis_tables``)."""
        return {owner: list(tables) for owner, tables in self.analyses().items()}
