"""What judge records: the audit logs (tool calls, Stop summaries, shadow verdicts), the
decision log, and the service's log table with its write buffer.

* :mod:`judge.logs.jsonl` — append-only JSONL files, safe with concurrent writers;
* :mod:`judge.logs.audit` — :class:`~judge.logs.audit.AuditLog`, the audit records;
* :mod:`judge.logs.decisions` — ``decisions.jsonl``, every decision the service answered;
* :mod:`judge.logs.table`, :mod:`judge.logs.table_postgres` — the same records as rows
  (SQLite or PostgreSQL), and :mod:`judge.logs.buffer`, which batches their writes.
"""
