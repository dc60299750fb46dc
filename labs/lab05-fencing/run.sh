#!/usr/bin/env bash
# Lab 5: epochs and fencing. The handout's steps, as commands.
. "$(dirname "$0")/../lib.sh"
auralog sql "drop table if exists lab05; create table lab05(writer text);"
second=127.0.0.1:$(( ${AURALOG_ENGINE##*:} + 1 ))
step "auralog engine --listen $second &   # a second writer"
# The binary itself, not the auralog() function: $! must be the engine.
"$AURALOG" engine --listen "$second" > "$AURALOG_DIR/log/engine-second.log" 2>&1 &
pid=$!
until auralog sql --engine "$second" "select 1" > /dev/null 2>&1; do sleep 0.1; done
auralog sql --engine "$second" "insert into lab05 values('second');"
step 'auralog sql "insert ..."   # through the first engine'
if msg=$(auralog sql "insert into lab05 values('first-after');" 2>&1); then
  echo "unexpected: the first engine still writes"; exit 1
fi
echo "$msg"
kill "$pid"; wait "$pid" || true
step 'auralog fault engine-crash; auralog cluster up   # replace the fenced engine'
auralog fault engine-crash
auralog cluster up | tail -1
auralog sql "select * from lab05;"
