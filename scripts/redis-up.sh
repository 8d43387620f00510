#!/usr/bin/env bash
# Makes sure the Redis the tests need is up, and exports where it is:
#   REDIS_URL            a standalone Redis on 127.0.0.1:6379 (started if nothing answers there)
#   REDIS_CLUSTER_NODES  a 3-master + 3-replica Redis Cluster on 127.0.0.1 ports
#                        SLUICE_CLUSTER_PORT (default 7100) to +5, data under .redis-test/;
#                        if another checkout's Redis holds those ports, the next block of 10
# The servers are started without descriptor 9: /work/integrate.sh holds its merge lock there,
# and a daemon that inherited it would hold the lock after the run, blocking every landing.
# Idempotent: what already answers correctly is reused. Meant to be sourced (.ci/run does), so
# the exports reach the caller; run directly, it prints them. Needs redis-server and redis-cli.

sluice_redis_up() {
  local root data base port i
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  data="$root/.redis-test"

  local tool
  for tool in redis-server redis-cli; do
    if ! command -v "$tool" >/dev/null 2>&1; then
      echo "redis-up: $tool is not installed (apt-get install redis-server redis-tools)" >&2
      return 1
    fi
  done

  # wait_until SECONDS DESCRIPTION COMMAND...: polls every 0.2 s, fails with a clear message.
  wait_until() {
    local seconds=$1 what=$2 tries
    shift 2
    for ((tries = 0; tries < seconds * 5; tries++)); do
      if "$@" >/dev/null 2>&1; then return 0; fi
      sleep 0.2
    done
    echo "redis-up: timed out after ${seconds}s waiting for $what" >&2
    return 1
  }
  pongs() { [ "$(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null)" = PONG ]; }
  cluster_ready() {
    local p info nodes
    for ((p = base; p < base + 6; p++)); do
      info="$(redis-cli -h 127.0.0.1 -p "$p" cluster info 2>/dev/null)" || return 1
      [[ "$info" == *cluster_state:ok* ]] || return 1
      nodes="$(redis-cli -h 127.0.0.1 -p "$p" cluster nodes 2>/dev/null)" || return 1
      [ "$(grep -c ' slave ' <<<"${nodes//,/ }")" -eq 3 ] || return 1
      [ "$(grep -c ' master ' <<<"${nodes//,/ }")" -eq 3 ] || return 1
    done
  }

  if ! pongs 6379; then
    mkdir -p "$data/standalone"
    echo "redis-up: starting a standalone Redis on 127.0.0.1:6379"
    redis-server --daemonize yes --port 6379 --bind 127.0.0.1 --save "" --appendonly no \
      --dir "$data/standalone" --logfile "$data/standalone/redis.log" >/dev/null 9>&-
    wait_until 15 "Redis on 127.0.0.1:6379" pongs 6379 || return 1
  fi

  # A node is ours when its dir is under $data; a block is usable when no other Redis holds it.
  foreign_in_block() {
    local p dir
    for ((p = base; p < base + 6; p++)); do
      pongs "$p" || continue
      dir="$(redis-cli -h 127.0.0.1 -p "$p" config get dir 2>/dev/null | sed -n 2p)"
      [ "$dir" = "$data/cluster/$p" ] || return 0
    done
    return 1
  }
  local first="${SLUICE_CLUSTER_PORT:-7100}" reuse=0
  for ((base = first; base < first + 100; base += 10)); do
    if cluster_ready; then
      reuse=1
      break
    fi
    foreign_in_block || break
    echo "redis-up: ports $base-$((base + 5)) are held by a Redis that is not ours; trying the next block"
  done
  if ((base >= first + 100)); then
    echo "redis-up: no free block of 6 ports from $first to $((first + 99)); set SLUICE_CLUSTER_PORT" >&2
    return 1
  fi

  if ((reuse)); then
    echo "redis-up: reusing the Redis Cluster on ports $base-$((base + 5))"
  else
    for ((port = base; port < base + 6; port++)); do
      if pongs "$port"; then
        redis-cli -h 127.0.0.1 -p "$port" shutdown nosave >/dev/null 2>&1 || true
        wait_until 10 "the old node on port $port to stop" eval "! pongs $port" || return 1
      fi
    done
    rm -rf "$data/cluster"
    local addresses=()
    for ((i = 0; i < 6; i++)); do
      port=$((base + i))
      mkdir -p "$data/cluster/$port"
      redis-server --daemonize yes --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
        --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
        --dir "$data/cluster/$port" --logfile "$data/cluster/$port/redis.log" >/dev/null 9>&-
      addresses+=("127.0.0.1:$port")
    done
    for ((port = base; port < base + 6; port++)); do
      wait_until 15 "cluster node on port $port" pongs "$port" || return 1
    done
    echo "redis-up: creating a Redis Cluster of 3 masters and 3 replicas on ports $base-$((base + 5))"
    if ! redis-cli --cluster create "${addresses[@]}" --cluster-replicas 1 --cluster-yes >"$data/cluster/create.log" 2>&1; then
      echo "redis-up: redis-cli --cluster create failed:" >&2
      cat "$data/cluster/create.log" >&2
      return 1
    fi
    wait_until 60 "cluster_state:ok with 3 masters and 3 replicas on every node" cluster_ready || return 1
  fi

  export REDIS_URL="redis://127.0.0.1:6379"
  REDIS_CLUSTER_NODES="127.0.0.1:$base"
  for ((port = base + 1; port < base + 6; port++)); do REDIS_CLUSTER_NODES+=",127.0.0.1:$port"; done
  export REDIS_CLUSTER_NODES
  echo "redis-up: REDIS_URL=$REDIS_URL REDIS_CLUSTER_NODES=$REDIS_CLUSTER_NODES"
}

if sluice_redis_up; then
  unset -f sluice_redis_up wait_until pongs cluster_ready foreign_in_block
else
  unset -f sluice_redis_up wait_until pongs cluster_ready foreign_in_block
  # Sourced, `return` hands the failure to the caller (whose `set -e` stops); run, `exit` does.
  return 1 2>/dev/null || exit 1
fi
