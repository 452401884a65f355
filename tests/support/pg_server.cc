#include "pg_server.h"

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "gtest/gtest.h"
#include "shell.h"
#include "zk_server.h"

namespace dlock::test {

PgServer& PgServer::shared() {
  // Destroyed at normal process exit, which stops the server; pg-start.sh's watchdog
  // (PG_OWNER_PID) stops it if this process crashes.
  static PgServer server;
  return server;
}

PgServer::PgServer() : owner_pid_(::getpid()) {
  if (const char* external = std::getenv("DLOCK_TEST_PG"); external != nullptr && *external) {
    external_ = true;
    base_url_ = external;
    while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
    return;
  }
  dir_ = make_temp_dir("dlock-pg");
  std::string address =
      run_script("pg-start.sh", {dir_}, {"PG_OWNER_PID=" + std::to_string(owner_pid_)});
  while (!address.empty() && address.back() == '\n') address.pop_back();
  port_ = std::stoi(address.substr(address.rfind(':') + 1));
  base_url_ = "postgresql://postgres:secret@" + address;
}

PgServer::~PgServer() {
  // A fork()ed child exiting must not stop the parent's server.
  if (external_ || ::getpid() != owner_pid_) return;
  try {
    run_script("pg-stop.sh", {dir_});
  } catch (const std::exception&) {
    // Best effort at exit; the watchdog stops the server once we are gone.
  }
}

std::string PgServer::url(const std::string& database) const {
  std::lock_guard lock(mutex_);
  return base_url_ + "/" + database;
}

int PgServer::port() const {
  std::lock_guard lock(mutex_);
  return port_;
}

std::string PgServer::psql(const std::string& sql, const std::string& database) const {
  std::string output = run_command("psql -X -q -At -v ON_ERROR_STOP=1 " +
                                   shell_quote(url(database)) + " -c " + shell_quote(sql));
  while (!output.empty() && output.back() == '\n') output.pop_back();
  return output;
}

void PgServer::create_database(const std::string& name) const {
  // FILE_COPY is the quick way for a tiny database.
  psql("CREATE DATABASE " + name + " STRATEGY = FILE_COPY");
}

void PgServer::restart() {
  std::lock_guard lock(mutex_);
  if (external_) throw std::runtime_error("an external server (DLOCK_TEST_PG) cannot restart");
  run_script("pg-stop.sh", {dir_, "--keep"});
  run_script("pg-start.sh", {dir_, std::to_string(port_)},
             {"PG_OWNER_PID=" + std::to_string(owner_pid_)});
}

}  // namespace dlock::test
