#!/usr/bin/env bats
# cowrun serve never does for a client what the client could not do
# itself (issue 23, item 1): a server run as root becomes its client
# (groups, gid, uid) before it touches anything of the client's; a server
# that cannot serves another uid only into a directory that uid owns, and
# runs none of its commands (--report-filter, --report-to: issue 34); the
# descriptors a client passes are checked for kind and access mode.

load serve-helpers

setup() {
	[ "$(id -u)" = 0 ] || skip "needs root to act as other users (setpriv)"
	serve_setup
	chmod 711 "$D"
	reachable_binaries
}

@test "serve as root: the batch runs as its client, who cannot write in a directory of root's" {
	start_server --socket-mode 0666 --allow-uid 65534 selftest --tasks 3 --report-bytes 10
	mkdir -m 755 "$D/roots"
	echo keep > "$D/roots/task-000001"
	run --separate-stderr as nobody "$COWRUN" submit --socket "$S" -o "$D/roots"
	[ "$status" -eq 255 ]
	[[ "$stderr" == *"cannot write in output directory"*"Permission denied"* ]]
	[ "$(cat "$D/roots/task-000001")" = keep ]
	[ "$(ls "$D/roots")" = task-000001 ]
	# Into its own directory: the reports are the client's.
	mkdir -m 755 "$D/mine" && chown nobody "$D/mine"
	run --separate-stderr as nobody "$COWRUN" submit --socket "$S" -o "$D/mine"
	[ "$status" -eq 0 ]
	[ "$(ls "$D/mine" | wc -l)" -eq 3 ]
	[ "$(stat -c %U "$D/mine/task-000000")" = nobody ]
	# The server's own user still gets the server's rights.
	run --separate-stderr "$COWRUN" submit --socket "$S" -o "$D/roots"
	[ "$status" -eq 0 ]
	[ "$(stat -c %U "$D/roots/task-000001")" = root ]
	stop_server
	[ "$status" -eq 0 ]
}

@test "serve as another user: a client of another uid only into a directory it owns" {
	chown daemon "$D"
	start_server_as daemon --socket-mode 0666 --allow-uid 65534 selftest --tasks 3 --report-bytes 10
	# A directory both may write in, that the client does not own (/tmp's kind).
	mkdir -m 1777 "$D/shared"
	echo keep > "$D/shared/task-000001" && chown daemon "$D/shared/task-000001"
	run --separate-stderr as nobody "$COWRUN" submit --socket "$S" -o "$D/shared"
	[ "$status" -eq 255 ]
	[[ "$stderr" == *"serves another user only into a directory that user owns"* ]]
	[ "$(cat "$D/shared/task-000001")" = keep ]
	# Its own directory, writable by the server: served.
	mkdir -m 777 "$D/mine" && chown nobody "$D/mine"
	run --separate-stderr as nobody "$COWRUN" submit --socket "$S" -o "$D/mine"
	[ "$status" -eq 0 ]
	[ "$(ls "$D/mine" | wc -l)" -eq 3 ]
	stop_server
	[ "$status" -eq 0 ]
}

@test "serve as root: a client's --report-filter and --report-to run as that client" {
	start_server --socket-mode 0666 --allow-uid 65534 selftest --tasks 3 --report-bytes 10
	mkdir -m 755 "$D/mine" "$D/sink" && chown nobody "$D/mine" "$D/sink"
	# The filter's output is the report: its uid, the client's.
	run --separate-stderr as nobody "$COWRUN" submit --socket "$S" -o "$D/mine" --report-filter 'id -u'
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; false; }
	for k in 0 1 2; do
		f=$(printf '%s/mine/task-%06d' "$D" "$k")
		[ "$(cat "$f")" = 65534 ]
		[ "$(stat -c %U "$f")" = nobody ]
	done
	# The sink too: it writes as the client, where only the client may.
	run --separate-stderr as nobody "$COWRUN" submit --socket "$S" -o "$D/mine" \
		--report-to "sh -c 'id -u > $D/sink/{/}; cp {} $D/sink/{/}.copy'"
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; false; }
	[ "$(cat "$D/sink/task-000002")" = 65534 ]
	[ "$(stat -c %U "$D/sink/task-000002")" = nobody ]
	# {}, the report in its private directory, is the client's to read.
	[ "$(wc -c < "$D/sink/task-000002.copy")" -eq 10 ]
	# The server's own user's filter runs as root.
	run --separate-stderr "$COWRUN" submit --socket "$S" -o "$D/roots" --report-filter 'id -u'
	[ "$status" -eq 0 ]
	[ "$(cat "$D/roots/task-000001")" = 0 ]
	stop_server
	[ "$status" -eq 0 ]
}

@test "serve as another user: a client of another uid may not run a command as the server's user; its own uid may" {
	chown daemon "$D"
	start_server_as daemon --socket-mode 0666 --allow-uid 65534 selftest --tasks 3 --report-bytes 10
	# The client's own directory, writable by the server: reports would
	# be served there, but not a command.  The command would leave
	# $D/ran, which only the server's user may create.
	mkdir -m 777 "$D/mine" && chown nobody "$D/mine"
	echo keep > "$D/mine/task-000001" && chown nobody "$D/mine/task-000001"
	run --separate-stderr as nobody "$COWRUN" submit --socket "$S" -o "$D/mine" \
		--report-filter "sh -c 'touch $D/ran; cat'"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: submit: --report-filter: this server (uid $(id -u daemon)) cannot act as you (uid 65534): it would run your command as its own user"
	run --separate-stderr as nobody "$COWRUN" submit --socket "$S" -o "$D/mine" \
		--report-filter cat --report-to "sh -c 'touch $D/ran'"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: submit: --report-filter, --report-to: this server (uid $(id -u daemon)) cannot act *"
	[ ! -e "$D/ran" ]
	[ "$(ls -A "$D/mine")" = task-000001 ]
	[ "$(cat "$D/mine/task-000001")" = keep ]
	# --report-suffix runs nothing: served.
	run --separate-stderr as nobody "$COWRUN" submit --socket "$S" -o "$D/mine" --report-suffix .txt
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; false; }
	[ -s "$D/mine/task-000002.txt" ]
	# The server's own uid: its command runs as itself, as it would run it.
	mkdir "$D/own" && chown daemon "$D/own"
	run --separate-stderr as daemon "$COWRUN" submit --socket "$S" -o "$D/own" --report-filter 'id -u'
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; false; }
	[ "$(cat "$D/own/task-000000")" = 1 ]
	stop_server
	[ "$status" -eq 0 ]
}

# raw_request SOCKET DIR_FLAGS: a run request written by hand, its output
# directory opened with DIR_FLAGS (python's os.O_* names, "|"-joined);
# prints the reply's status and text.
raw_request() {
	/usr/bin/python3 - "$1" "$2" "$D/out" <<'PY'
import os, socket, struct, sys
sock, flags, out = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(out, exist_ok=True)
dirfd = os.open(out, eval("|".join("os." + f for f in flags.split("|"))))
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sock)
socket.send_fds(s, [b"CWRQ" + struct.pack("<HHI", 1, 1, 0)], [1, 2, dirfd])
reply = s.recv(4096)
print(struct.unpack("<i", reply[12:16])[0], reply[16:].decode(errors="replace"))
PY
}

@test "serve: the output directory must be opened for reading, not path-only" {
	start_server --socket-mode 0666 selftest --tasks 3 --report-bytes 10
	run raw_request "$S" "O_PATH|O_DIRECTORY"
	[ "$status" -eq 0 ]
	[[ "$output" == "255 the output directory must be a directory opened for reading"* ]]
	[ -z "$(ls -A "$D/out")" ]
	run raw_request "$S" "O_RDONLY|O_DIRECTORY"
	[[ "$output" == "0 "* ]] || [[ "$output" == *"tasks 3 of 3"* ]] || { echo "$output" >&2; false; }
	[ "$(ls "$D/out" | wc -l)" -eq 3 ]
	stop_server
	[ "$status" -eq 0 ]
}
