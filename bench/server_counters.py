"""What a server has done so far, read right before and right after a benchmark run by
bench/compare.py, bench/backends_compare.py and bench/servers_compare.py."""
import socket
import subprocess

# The watch events a ZooKeeper server has fired, by the kind of change (mntr, ZooKeeper 3.6+).
ZK_WATCH_KEYS = ["zk_sum_node_deleted_watch_count", "zk_sum_node_created_watch_count",
                 "zk_sum_node_changed_watch_count", "zk_sum_node_children_watch_count"]


def mntr(port):
    """A ZooKeeper server's `mntr` figures on 127.0.0.1:port, by name."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"mntr")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    values = {}
    for line in data.decode().splitlines():
        key, _, value = line.partition("\t")
        try:
            values[key] = float(value)
        except ValueError:
            pass
    return values


def redis_info(port):
    """A Redis server's `INFO all` figures on 127.0.0.1:port, by name (a command's calls as
    `cmdstat_<name>`)."""
    info = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), "INFO", "all"],
                          capture_output=True, text=True, check=True).stdout
    values = {}
    for line in info.splitlines():
        key, _, value = line.partition(":")
        if key.startswith("cmdstat_"):
            value = value.split("calls=")[1].split(",")[0]
        try:
            values[key] = float(value)
        except ValueError:
            pass
    return values


def messages_sent(backend, port):
    """The wake-up messages a server has sent so far: ZooKeeper's watch events, Redis's
    PUBLISH calls; None for a server that sends none (it grants inside, or clients poll)."""
    if backend == "ZooKeeper":
        values = mntr(port)
        return sum(values.get(key, 0) for key in ZK_WATCH_KEYS)
    if backend == "Redis":
        return redis_info(port).get("cmdstat_publish", 0)
    return None
