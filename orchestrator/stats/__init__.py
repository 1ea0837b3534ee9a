"""Pure statistics every layer above may use: a median and its interval (``estimates``), the three verdicts
on a difference (``verdicts``) and the regression gate's arithmetic (``gate``). Numbers in, numbers out: no
run folder, no database, no board."""
