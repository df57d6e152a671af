#!/usr/bin/env bash
# testbed.sh: a cluster on one machine, for trying `iolab` on several nodes without having any.
#
# Nodes are network namespaces. Each client node n1..nN reaches shared storage over its own veth
# link, shaped with tc tbf (default 100mbit, seed 000's network) on both ends:
#   sshfs    a "storage server" namespace runs sshd and exports one directory; every node mounts
#            it with sshfs (a network filesystem, not a cluster one).
#   gluster  a GlusterFS replica-2 volume served from two server namespaces (synchronous
#            replication and locking between writers); every node mounts it with mount.glusterfs.
# A management network (a bridge in the root namespace, unshaped) reaches every node; each node
# runs its own sshd there, so `ssh -F STATE/ssh_config n1 CMD` runs CMD in n1's network namespace.
# Mounts are made with `nsenter --net` only, so they are global: every process on the machine
# sees /run/iolab-testbed/ID/mnt/sshfs/n1 and so on, and commands run in a node (ssh, `exec`) see
# every node's mount.
#
# Usage (as root):
#   scripts/testbed.sh up     [--id N] [--nodes 2] [--rate 100mbit] [--fs sshfs|gluster|both]
#                             [--sshfs-cache default|yes|no]
#   scripts/testbed.sh down   [--id N]
#   scripts/testbed.sh status [--id N]
#   scripts/testbed.sh env    [--id N]      # KEY='value' lines: nodes, addresses, mounts, links
#   scripts/testbed.sh exec   [--id N] NODE CMD...   # CMD in NODE's network namespace
#
#   --id N         0..9 (default 0): names, subnets and directories carry it, so testbeds with
#                  different ids coexist. Namespaces iotN-n1.., iotN-srv, iotN-gl1, iotN-gl2;
#                  management bridge iotNbr (10.(180+N).100.254/24, node i at .i); runtime state
#                  in /run/iolab-testbed/N, data (sshfs export, bricks) in /var/tmp/iolab-testbed/N.
#   --nodes K      client nodes, 1..9 (default 2).
#   --rate R       tbf rate of every client<->server link (default 100mbit); "none" leaves the
#                  links unshaped.
#   --fs F         sshfs (default), gluster or both.
#   --sshfs-cache  default: sshfs's own defaults; yes: kernel_cache and long attribute and
#                  directory caching (a node may read stale data another node has replaced);
#                  no: direct_io and no attribute, entry or directory cache (every read goes to
#                  the server).
#
# `up` tears down what a crashed run left for the same id first. If glusterd or the volume fails,
# `up` prints why (the tail of glusterd's log), leaves sshfs usable and exits with status 3;
# `env` then prints TESTBED_GLUSTER_ERROR. `down` unmounts (lazily if busy), kills the processes
# it started (pid files, then whatever still runs in its namespaces) and deletes its namespaces,
# links and directories.
#
# Example:
#   scripts/testbed.sh up --id 1 --nodes 2 --fs both
#   ssh -F /run/iolab-testbed/1/ssh_config n1 'dd if=/dev/zero of=/run/iolab-testbed/1/mnt/sshfs/n1/f bs=1M count=24 conv=fsync'
#   scripts/testbed.sh exec --id 1 n2 ls -l /run/iolab-testbed/1/mnt/sshfs/n2
#   scripts/testbed.sh down --id 1
#
# Needs: iproute2 (ip, tc), util-linux (nsenter, unshare), openssh-server, openssh-client, sshfs,
# fuse3, and for --fs gluster: glusterfs-server, glusterfs-client.
set -euo pipefail

die() { echo "testbed: $*" >&2; exit 1; }
say() { echo "testbed: $*" >&2; }

cmd=${1:-}
[ -n "$cmd" ] || die "usage: $0 up|down|status|env|exec [--id N] ... (see the header of $0)"
shift

ID=0 NODES=2 RATE=100mbit FS=sshfs CACHE=default
while [ $# -gt 0 ]; do
  case "$1" in
    --id) ID=${2:?--id needs a value}; shift 2 ;;
    --nodes) NODES=${2:?--nodes needs a value}; shift 2 ;;
    --rate) RATE=${2:?--rate needs a value}; shift 2 ;;
    --fs) FS=${2:?--fs needs a value}; shift 2 ;;
    --sshfs-cache) CACHE=${2:?--sshfs-cache needs a value}; shift 2 ;;
    --) shift; break ;;
    -*) die "unknown option $1 (see the header of $0)" ;;
    *) break ;;
  esac
done
[[ "$ID" =~ ^[0-9]$ ]] || die "--id must be 0..9, not '$ID'"
[[ "$NODES" =~ ^[1-9]$ ]] || die "--nodes must be 1..9, not '$NODES'"
[[ "$RATE" =~ ^([0-9]+(bit|kbit|mbit|gbit)|none)$ ]] || die "--rate must look like 100mbit (or none), not '$RATE'"
case "$FS" in sshfs|gluster|both) ;; *) die "--fs must be sshfs, gluster or both, not '$FS'" ;; esac
case "$CACHE" in default|yes|no) ;; *) die "--sshfs-cache must be default, yes or no, not '$CACHE'" ;; esac

P="iot$ID"                        # prefix of every name this testbed makes
NET="10.$((180 + ID))"            # its /16
S="/run/iolab-testbed/$ID"        # runtime state: keys, configs, pid files, mount points
D="/var/tmp/iolab-testbed/$ID"    # data: the sshfs export, gluster state, logs and bricks
NETNS_DIR=/var/run/netns
VOL="iolab$ID"

ns_srv="$P-srv"
ns_node() { echo "$P-n$1"; }
ns_gl() { echo "$P-gl$1"; }
mgmt_addr() { echo "$NET.100.$1"; }
sshfs_srv_addr() { echo "$NET.$1.254"; }     # server end of node i's sshfs link
sshfs_node_addr() { echo "$NET.$1.1"; }
gl_svc_addr() { echo "$NET.$((200 + $1)).1"; } # server j's service address (on its lo)
gl_link_net() { echo "$NET.$((10 * $1 + $2))"; } # link between server j and node i
in_ns() { local ns=$1; shift; nsenter --net="$NETNS_DIR/$ns" "$@"; }

need_root() { [ "$(id -u)" = 0 ] || die "must run as root (it makes network namespaces and mounts)"; }

# ---------------------------------------------------------------------------------------- down
down() {
  local m ns pid f
  # Mounts first, from /proc/mounts (a mount whose sshfs died cannot even be stat'ed), deepest
  # first, lazily so a busy mount does not stop the rest.
  for m in $(awk -v p="$S/" 'index($2, p) == 1 {print $2}' /proc/mounts | sort -r); do
    umount -l "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || say "could not unmount $m"
  done
  # Processes started from pid files, then anything still running in our namespaces.
  for f in "$S"/*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f" 2>/dev/null || true)
    [[ "$pid" =~ ^[0-9]+$ ]] && kill "$pid" 2>/dev/null || true
    rm -f "$f"
  done
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$P-(n[0-9]|srv|gl[12])$" || true); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
  done
  sleep 0.3
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$P-(n[0-9]|srv|gl[12])$" || true); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns delete "$ns" 2>/dev/null || say "could not delete namespace $ns"
  done
  # Root-namespace ends: the bridge (node veths went with their namespaces).
  ip link delete "${P}br" 2>/dev/null || true
  for f in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E "^${P}m[0-9]b$" || true); do
    ip link delete "$f" 2>/dev/null || true
  done
  rm -rf "$S" "$D" || say "could not remove all of $S and $D"
}

# ------------------------------------------------------------------------------------------ up
mkns() {
  ip netns add "$1"
  in_ns "$1" ip link set lo up
}

# veth NAME_A NS_A ADDR_A/LEN NAME_B NS_B ADDR_B/LEN: a link, both ends up and addressed.
veth() {
  ip link add "$1" type veth peer name "$4"
  ip link set "$1" netns "$2"
  ip link set "$4" netns "$5"
  in_ns "$2" ip addr add "$3" dev "$1"
  in_ns "$5" ip addr add "$6" dev "$4"
  in_ns "$2" ip link set "$1" up
  in_ns "$5" ip link set "$4" up
}

shape() { # NS IFACE
  [ "$RATE" = none ] && return 0
  in_ns "$1" tc qdisc add dev "$2" root tbf rate "$RATE" burst 32kbit latency 400ms
  SHAPED+=" $1:$2"
}

start_sshd() { # NS NAME LISTEN_ADDR...
  local ns=$1 name=$2; shift 2
  local conf="$S/sshd_$name.conf" a
  {
    echo "HostKey $S/ssh_host_ed25519_key"
    for a in "$@"; do echo "ListenAddress $a"; done
    echo "PidFile $S/sshd_$name.pid"
    echo "AuthorizedKeysFile $S/authorized_keys"
    echo "StrictModes no"
    echo "PermitRootLogin prohibit-password"
    echo "PasswordAuthentication no"
    echo "KbdInteractiveAuthentication no"
    echo "UsePAM no"
    echo "UseDNS no"
    echo "PrintMotd no"
    echo "Subsystem sftp internal-sftp"
  } >"$conf"
  mkdir -p /run/sshd
  in_ns "$ns" /usr/sbin/sshd -f "$conf" -E "$S/log/sshd_$name.log" \
    || die "sshd in $ns did not start: $(tail -n 5 "$S/log/sshd_$name.log" 2>/dev/null)"
}

wait_port() { # NS ADDR PORT: wait up to 10 s for a listener
  local i
  for i in $(seq 1 100); do
    in_ns "$1" bash -c "exec 3<>/dev/tcp/$2/$3" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

sshfs_opts() {
  local o="allow_other,reconnect,ServerAliveInterval=5,ServerAliveCountMax=3,StrictHostKeyChecking=no"
  o+=",UserKnownHostsFile=/dev/null,LogLevel=ERROR,BatchMode=yes,ConnectTimeout=10,IdentityFile=$S/id_ed25519"
  case "$CACHE" in
    yes) o+=",kernel_cache,dir_cache=yes,attr_timeout=60,entry_timeout=60" ;;
    no) o+=",direct_io,dir_cache=no,attr_timeout=0,entry_timeout=0,negative_timeout=0" ;;
  esac
  echo "$o"
}

gluster_fail() {
  local why=$1 j
  {
    echo "$why"
    for j in 1 2; do
      [ -f "$D/gl$j/log/glusterd.log" ] && { echo "--- tail of glusterd $j's log:"; tail -n 8 "$D/gl$j/log/glusterd.log"; }
    done
  } >"$S/gluster.error"
  say "gluster part failed: $why"
  sed 's/^/testbed:   /' "$S/gluster.error" | tail -n +2 >&2 || true
  return 1
}

gluster_servers() {
  local j ns pid t
  for t in glusterd gluster mount.glusterfs; do
    command -v "$t" >/dev/null || { gluster_fail "$t is not installed (apt-get install glusterfs-server glusterfs-client)"; return 1; }
  done
  for j in 1 2; do
    ns=$(ns_gl "$j")
    mkdir -p "$D/gl$j/state" "$D/gl$j/log" "$D/gl$j/brick"
    cp -a /var/lib/glusterd/. "$D/gl$j/state/" 2>/dev/null || true
    # Not the hooks: Debian's run Samba and CTDB setup scripts against the machine's /etc.
    rm -rf "$D/gl$j/state/glusterd.info" "$D/gl$j/state/peers" "$D/gl$j/state/vols" "$D/gl$j/state/hooks"
    mkdir -p "$D/gl$j/state/hooks/1"
    # nsenter, not the in_ns function: `$!` must be the process that becomes glusterd.
    nsenter --net="$NETNS_DIR/$ns" unshare -m --propagation private sh -c \
      "mount -t tmpfs tmpfs /run && mkdir -p /run/gluster && \
       mount --bind '$D/gl$j/state' /var/lib/glusterd && mount --bind '$D/gl$j/log' /var/log/glusterfs && \
       exec glusterd -N --log-file='$D/gl$j/log/glusterd.log'" \
      >>"$D/gl$j/log/start.log" 2>&1 &
    echo $! >"$S/glusterd$j.pid"
  done
  for j in 1 2; do
    wait_port "$(ns_gl "$j")" "$(gl_svc_addr "$j")" 24007 || { gluster_fail "glusterd $j did not listen on $(gl_svc_addr "$j"):24007 within 10 s"; return 1; }
  done
  # `gluster` must run in glusterd 1's mount namespace (its socket is on the private /run).
  pid=$(cat "$S/glusterd1.pid")
  local G="nsenter --target $pid --net --mount gluster --mode=script"
  local out
  out=$($G peer probe "$(gl_svc_addr 2)" 2>&1) || { gluster_fail "peer probe: $out"; return 1; }
  for j in $(seq 1 50); do
    $G peer status 2>/dev/null | grep -q 'Peer in Cluster (Connected)' && break
    sleep 0.2
  done
  out=$($G volume create "$VOL" replica 2 "$(gl_svc_addr 1):$D/gl1/brick" "$(gl_svc_addr 2):$D/gl2/brick" force 2>&1) \
    || { gluster_fail "volume create: $out"; return 1; }
  out=$($G volume start "$VOL" 2>&1) || { gluster_fail "volume start: $out"; return 1; }
  # Both bricks online before a client mounts (a client that sees one brick writes to one).
  for j in $(seq 1 100); do
    [ "$($G volume status "$VOL" detail 2>/dev/null | grep -cE '^Online +: Y')" = 2 ] && return 0
    sleep 0.2
  done
  gluster_fail "the bricks of $VOL were not both online within 20 s: $($G volume status "$VOL" 2>&1 | tr '\n' ' ')"
}

gluster_clients() {
  local i m
  for i in $(seq 1 "$NODES"); do
    m="$S/mnt/gluster/n$i"
    mkdir -p "$m"
    in_ns "$(ns_node "$i")" mount -t glusterfs \
      -o "backup-volfile-servers=$(gl_svc_addr 2),log-file=$D/log/gluster-client-n$i.log" \
      "$(gl_svc_addr 1):/$VOL" "$m" 2>"$S/log/gluster-mount-n$i.err" \
      || { gluster_fail "mount -t glusterfs on n$i: $(cat "$S/log/gluster-mount-n$i.err") $(tail -n 5 "$D/log/gluster-client-n$i.log" 2>/dev/null)"; return 1; }
    mountpoint -q "$m" || { gluster_fail "mount -t glusterfs on n$i left no mount at $m: $(tail -n 5 "$D/log/gluster-client-n$i.log" 2>/dev/null)"; return 1; }
  done
}

up() {
  need_root
  local t
  for t in ip tc nsenter unshare ssh ssh-keygen /usr/sbin/sshd; do
    command -v "$t" >/dev/null || die "$t is not installed (apt-get install iproute2 util-linux openssh-server openssh-client)"
  done
  if [ "$FS" != gluster ]; then command -v sshfs >/dev/null || die "sshfs is not installed (apt-get install sshfs fuse3)"; fi
  [ -e /dev/fuse ] || die "/dev/fuse is missing (FUSE is needed for sshfs and glusterfs mounts)"
  down
  mkdir -p "$S/log" "$S/mnt" "$D/log"
  SHAPED=""
  echo "$NODES" >"$S/nodes"; echo "$RATE" >"$S/rate"; echo "$FS" >"$S/fs"; echo "$CACHE" >"$S/sshfs_cache"
  ssh-keygen -q -t ed25519 -N '' -C "iolab-testbed-$ID" -f "$S/id_ed25519"
  ssh-keygen -q -t ed25519 -N '' -C "iolab-testbed-$ID-host" -f "$S/ssh_host_ed25519_key"
  cp "$S/id_ed25519.pub" "$S/authorized_keys"

  # Management network: a bridge in the root namespace, one unshaped veth per node.
  ip link add "${P}br" type bridge
  ip addr add "$NET.100.254/24" dev "${P}br"
  ip link set "${P}br" up
  local i j ns
  for i in $(seq 1 "$NODES"); do
    ns=$(ns_node "$i")
    mkns "$ns"
    ip link add "${P}m${i}c" type veth peer name "${P}m${i}b"
    ip link set "${P}m${i}c" netns "$ns"
    ip link set "${P}m${i}b" master "${P}br" up
    in_ns "$ns" ip addr add "$(mgmt_addr "$i")/24" dev "${P}m${i}c"
    in_ns "$ns" ip link set "${P}m${i}c" up
  done

  # sshfs: the server namespace and one shaped link per node.
  if [ "$FS" != gluster ]; then
    mkns "$ns_srv"
    mkdir -p "$D/export"
    local listen=()
    for i in $(seq 1 "$NODES"); do
      veth "${P}s${i}c" "$(ns_node "$i")" "$(sshfs_node_addr "$i")/24" "${P}s${i}v" "$ns_srv" "$(sshfs_srv_addr "$i")/24"
      shape "$(ns_node "$i")" "${P}s${i}c"
      shape "$ns_srv" "${P}s${i}v"
      listen+=("$(sshfs_srv_addr "$i")")
    done
    start_sshd "$ns_srv" srv "${listen[@]}"
  fi

  # Gluster: two server namespaces joined to each other (unshaped, glusterd's own traffic) and to
  # every node by a shaped link; each server's service address sits on its lo, routed over them.
  if [ "$FS" != sshfs ]; then
    for j in 1 2; do mkns "$(ns_gl "$j")"; in_ns "$(ns_gl "$j")" ip addr add "$(gl_svc_addr "$j")/32" dev lo; done
    veth "${P}gx1" "$(ns_gl 1)" "$NET.250.1/24" "${P}gx2" "$(ns_gl 2)" "$NET.250.2/24"
    in_ns "$(ns_gl 1)" ip route add "$(gl_svc_addr 2)/32" via "$NET.250.2" src "$(gl_svc_addr 1)"
    in_ns "$(ns_gl 2)" ip route add "$(gl_svc_addr 1)/32" via "$NET.250.1" src "$(gl_svc_addr 2)"
    for i in $(seq 1 "$NODES"); do
      for j in 1 2; do
        local n; n=$(gl_link_net "$j" "$i")
        veth "${P}g${j}${i}c" "$(ns_node "$i")" "$n.1/24" "${P}g${j}${i}v" "$(ns_gl "$j")" "$n.254/24"
        shape "$(ns_node "$i")" "${P}g${j}${i}c"
        shape "$(ns_gl "$j")" "${P}g${j}${i}v"
        in_ns "$(ns_node "$i")" ip route add "$(gl_svc_addr "$j")/32" via "$n.254" src "$n.1"
      done
    done
  fi
  echo "$SHAPED" >"$S/shaped"

  # Each node's own sshd on its management address (for the coordinator's `ssh`).
  for i in $(seq 1 "$NODES"); do start_sshd "$(ns_node "$i")" "n$i" "$(mgmt_addr "$i")"; done
  {
    for i in $(seq 1 "$NODES"); do
      printf 'Host n%s\n  HostName %s\n  User root\n  IdentityFile %s\n  IdentitiesOnly yes\n' "$i" "$(mgmt_addr "$i")" "$S/id_ed25519"
      printf '  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n  BatchMode yes\n  ConnectTimeout 5\n\n'
    done
  } >"$S/ssh_config"

  # Gluster servers before the sshfs mounts, so their private mount namespaces hold no copy of a
  # FUSE mount; a failure here is reported and leaves sshfs usable.
  local gluster_ok=1
  if [ "$FS" != sshfs ]; then gluster_servers || gluster_ok=0; fi

  if [ "$FS" != gluster ]; then
    for i in $(seq 1 "$NODES"); do
      wait_port "$(ns_node "$i")" "$(sshfs_srv_addr "$i")" 22 || die "the server's sshd does not answer on $(sshfs_srv_addr "$i"):22 from n$i"
      mkdir -p "$S/mnt/sshfs/n$i"
      in_ns "$(ns_node "$i")" sshfs -o "$(sshfs_opts)" "root@$(sshfs_srv_addr "$i"):$D/export" "$S/mnt/sshfs/n$i" \
        2>"$S/log/sshfs-n$i.err" || die "sshfs on n$i failed: $(cat "$S/log/sshfs-n$i.err")"
    done
  fi
  if [ "$FS" != sshfs ] && [ $gluster_ok = 1 ]; then gluster_clients || gluster_ok=0; fi
  for i in $(seq 1 "$NODES"); do
    wait_port "$(ns_node "$i")" "$(mgmt_addr "$i")" 22 || die "n$i's sshd does not answer on $(mgmt_addr "$i"):22"
  done

  say "up: $NODES node(s), fs $FS, links $RATE; state in $S"
  say "run a command on a node:  ssh -F $S/ssh_config n1 CMD   or   $0 exec --id $ID n1 CMD"
  say "facts for scripts:        $0 env --id $ID"
  [ $gluster_ok = 1 ] || exit 3
}

# ----------------------------------------------------------------------------------------- env
env_() {
  [ -f "$S/nodes" ] || die "testbed $ID is not up (run: $0 up --id $ID)"
  local n rate fs i j names="" shaped
  n=$(cat "$S/nodes"); rate=$(cat "$S/rate"); fs=$(cat "$S/fs"); shaped=$(cat "$S/shaped")
  for i in $(seq 1 "$n"); do names+="${names:+ }n$i"; done
  q() { printf "%s='%s'\n" "$1" "$(printf '%s' "$2" | tr "'\n" '" ')"; }
  q TESTBED_ID "$ID"
  q TESTBED_NODES "$names"
  q TESTBED_STATE "$S"
  q TESTBED_SSH_CONFIG "$S/ssh_config"
  q TESTBED_SSH_KEY "$S/id_ed25519"
  q TESTBED_RATE "$rate"
  q TESTBED_FS "$fs"
  q TESTBED_SSHFS_CACHE "$(cat "$S/sshfs_cache")"
  q TESTBED_SHAPED "${shaped# }"
  q TESTBED_MGMT_BRIDGE "${P}br"
  q TESTBED_MGMT_ADDR "$NET.100.254"   # the root namespace on the management network
  if [ "$fs" != gluster ]; then
    q TESTBED_SSHFS_SERVER_NETNS "$ns_srv"
    q TESTBED_SSHFS_EXPORT "$D/export"
  fi
  if [ "$fs" != sshfs ]; then
    q TESTBED_GLUSTER_VOLUME "$VOL"
    q TESTBED_GLUSTER_SERVERS "$(gl_svc_addr 1) $(gl_svc_addr 2)"
    q TESTBED_GLUSTER_BRICKS "$D/gl1/brick $D/gl2/brick"
    if [ -f "$S/gluster.error" ]; then q TESTBED_GLUSTER_ERROR "$(cat "$S/gluster.error")"; fi
  fi
  for i in $(seq 1 "$n"); do
    q "NODE_n${i}_NETNS" "$(ns_node "$i")"
    q "NODE_n${i}_MGMT_ADDR" "$(mgmt_addr "$i")"
    if [ "$fs" != gluster ]; then
      q "NODE_n${i}_SSHFS_MOUNT" "$S/mnt/sshfs/n$i"
      q "NODE_n${i}_SSHFS_LINK" "${P}s${i}c"
    fi
    if [ "$fs" != sshfs ]; then
      q "NODE_n${i}_GLUSTER_MOUNT" "$S/mnt/gluster/n$i"
      q "NODE_n${i}_GLUSTER_LINKS" "${P}g1${i}c ${P}g2${i}c"
    fi
  done
}

status() {
  if [ ! -f "$S/nodes" ]; then echo "testbed $ID: down"; return 0; fi
  echo "testbed $ID: up ($(cat "$S/nodes") node(s), fs $(cat "$S/fs"), links $(cat "$S/rate"))"
  local m
  for m in "$S"/mnt/*/*; do
    if mountpoint -q "$m" 2>/dev/null && ls "$m" >/dev/null 2>&1; then echo "  mounted  $m"
    elif grep -qs " $m " /proc/mounts; then echo "  BROKEN   $m (its filesystem process is gone; run up again)"
    else echo "  MISSING  $m"; fi
  done
  ip netns list | awk '{print $1}' | grep -E "^$P-" | sed 's/^/  netns    /'
  [ -f "$S/gluster.error" ] && { echo "  gluster failed:"; sed 's/^/    /' "$S/gluster.error"; }
  return 0
}

case "$cmd" in
  up) up ;;
  down) need_root; down; say "down: testbed $ID removed" ;;
  status) status ;;
  env) env_ ;;
  exec)
    need_root
    node=${1:?exec needs a node name (n1..) and a command}; shift
    [ $# -gt 0 ] || die "exec needs a command after the node name"
    [[ "$node" =~ ^n[1-9]$ ]] || die "node must be n1..n9, not '$node'"
    [ -e "$NETNS_DIR/$(ns_node "${node#n}")" ] || die "node $node of testbed $ID does not exist (is it up?)"
    exec nsenter --net="$NETNS_DIR/$(ns_node "${node#n}")" "$@"
    ;;
  *) die "unknown command '$cmd' (up, down, status, env, exec)" ;;
esac
