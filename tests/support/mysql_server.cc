#include "mysql_server.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "zk_server.h"

extern char** environ;

namespace dlock::test {

namespace {

struct Spawned {
  pid_t pid;
  int in;   // the child's stdin, or -1
  int out;  // the child's stdout
  int err;  // the child's stderr
};

Spawned spawn(const std::vector<std::string>& argv, bool with_stdin) {
  int in[2] = {-1, -1}, out[2], err[2];
  if ((with_stdin && ::pipe2(in, O_CLOEXEC) != 0) || ::pipe2(out, O_CLOEXEC) != 0 ||
      ::pipe2(err, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe: " + std::string(std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (with_stdin) posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int failed = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (with_stdin) ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  if (failed != 0) throw std::runtime_error("cannot run " + argv[0] + ": " + std::strerror(failed));
  return {pid, in[1], out[0], err[0]};
}

std::string read_all(int fd) {
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

}  // namespace

std::string run_program(const std::vector<std::string>& argv) {
  Spawned child = spawn(argv, false);
  std::string out = read_all(child.out);
  std::string err = read_all(child.err);
  int status = 0;
  ::waitpid(child.pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error(argv[0] + " failed: " + err);
  }
  return out;
}

MysqlServer& MysqlServer::shared() {
  static MysqlServer server;
  return server;
}

MysqlServer::MysqlServer() : owner_pid_(::getpid()) {
  dir_ = make_temp_dir("dlock-mysql");
  const std::string address =
      run_script("mysql-start.sh", {dir_}, {"MYSQL_OWNER_PID=" + std::to_string(owner_pid_)});
  port_ = std::stoi(address.substr(address.find(':') + 1));
}

MysqlServer::~MysqlServer() {
  if (::getpid() != owner_pid_) return;
  try {
    run_script("mysql-stop.sh", {dir_, "--kill"});
  } catch (const std::exception&) {
    // The watchdog of mysql-start.sh stops it once this process is gone.
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string MysqlServer::url(const std::string& database, const std::string& query) const {
  return "mysql://dlock:secret@127.0.0.1:" + std::to_string(port_) + "/" + database + query;
}

std::string MysqlServer::sql(const std::string& statements) const {
  return run_program({"mariadb", "--no-defaults", "--socket=" + dir_ + "/socket", "-uroot", "-N",
                      "-B", "-e", statements});
}

void MysqlServer::create_database(const std::string& name) const {
  sql("CREATE DATABASE IF NOT EXISTS `" + name + "`");
}

void MysqlServer::restart() {
  run_script("mysql-stop.sh", {dir_, "--kill"});
  run_script("mysql-start.sh", {dir_, std::to_string(port_)},
             {"MYSQL_OWNER_PID=" + std::to_string(owner_pid_)});
}

void MysqlServer::pause() const { ::kill(server_pid(), SIGSTOP); }

void MysqlServer::resume() const { ::kill(server_pid(), SIGCONT); }

pid_t MysqlServer::server_pid() const {
  return std::stoi(run_program({"cat", dir_ + "/server.pid"}));
}

MariadbSession::MariadbSession(const std::string& database) {
  const MysqlServer& server = MysqlServer::shared();
  // --unbuffered: each answer comes when its statement ends, not when the client exits.
  Spawned child =
      spawn({"mariadb", "--no-defaults", "-h127.0.0.1", "-P" + std::to_string(server.port()),
             "-udlock", "-psecret", "-N", "-B", "--unbuffered", database},
            true);
  pid_ = child.pid;
  to_client_ = child.in;
  from_client_ = child.out;
  ::close(child.err);
}

MariadbSession::~MariadbSession() {
  ::close(to_client_);
  ::kill(pid_, SIGTERM);
  ::waitpid(pid_, nullptr, 0);
  ::close(from_client_);
}

std::string MariadbSession::ask(const std::string& statement) {
  const std::string line = statement + ";\n";
  if (::write(to_client_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    throw std::runtime_error("mariadb client: write failed");
  }
  std::string answer;
  char c;
  while (::read(from_client_, &c, 1) == 1 && c != '\n') answer += c;
  return answer;
}

}  // namespace dlock::test
