#include "dlock_process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace dlock::test {

namespace {
int decode(int status) {
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}
}  // namespace

Process::Process(std::vector<std::string> argv, std::vector<std::string> env) {
  static int counter = 0;
  const std::string base =
      "/tmp/dlock-cli-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  out_path_ = base + ".out";
  err_path_ = base + ".err";
  std::vector<std::string> env_storage;
  for (char** e = environ; *e; ++e) env_storage.emplace_back(*e);
  env_storage.insert(env_storage.end(), env.begin(), env.end());
  std::vector<char*> args, envp;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    setpgid(0, 0);  // its own group, so the destructor can clean up all it started
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    const int in = open("/dev/null", O_RDONLY);
    const int out = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    execvpe(args[0], args.data(), envp.data());
    _exit(127);
  }
  setpgid(pid_, pid_);
}

Process::~Process() {
  if (!reaped_) {
    killpg(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  killpg(pid_, SIGKILL);  // anything the process left in its group
  unlink(out_path_.c_str());
  unlink(err_path_.c_str());
}

void Process::signal(int sig) const { kill(pid_, sig); }

void Process::signal_group(int sig) const { killpg(pid_, sig); }

bool Process::running() {
  if (reaped_) return false;
  if (waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
  return !reaped_;
}

std::string Process::err_so_far() const { return read_file(err_path_); }

Finished Process::wait(std::chrono::milliseconds timeout) {
  const bool ended = eventually([&] { return !running(); }, timeout);
  EXPECT_TRUE(ended) << "process " << pid_ << " still running after " << timeout.count() << " ms";
  if (!ended) {
    killpg(pid_, SIGKILL);
    waitpid(pid_, &status_, 0);
    reaped_ = true;
  }
  return {decode(status_), read_file(out_path_), read_file(err_path_)};
}

Finished run(std::vector<std::string> argv, std::vector<std::string> env,
             std::chrono::milliseconds timeout) {
  Process process(std::move(argv), std::move(env));
  return process.wait(timeout);
}

std::string dlock_cli() { return DLOCK_CLI; }

TempDir::TempDir() {
  char name[] = "/tmp/dlock-test-XXXXXX";
  path_ = mkdtemp(name);
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::unique_ptr<Process> start_holder(
    const std::function<std::vector<std::string>(std::vector<std::string>)>& dlock_command,
    const std::string& name, const std::vector<std::string>& options, const std::string& marker) {
  std::vector<std::string> args = {"run"};
  args.insert(args.end(), options.begin(), options.end());
  args.insert(args.end(), {name, "--", "sh", "-c", "touch " + marker + "; exec sleep 60"});
  auto holder = std::make_unique<Process>(dlock_command(std::move(args)));
  EXPECT_TRUE(eventually([&] { return file_exists(marker); })) << "holder never got " << name;
  return holder;
}

void stop_holder(std::unique_ptr<Process>& holder) {
  holder->signal(SIGTERM);
  EXPECT_EQ(128 + SIGTERM, holder->wait().status);
  holder.reset();
}

char process_state(pid_t pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  // "PID (COMM) STATE ...", where COMM may itself contain ") ".
  const std::size_t end_of_name = stat.rfind(')');
  if (end_of_name == std::string::npos || end_of_name + 2 >= stat.size()) return 'X';
  return stat[end_of_name + 2];
}

bool process_running(pid_t pid) {
  const char state = process_state(pid);
  return state != 'Z' && state != 'X';
}

std::vector<pid_t> processes_with_argument(const std::string& argument) {
  std::vector<pid_t> found;
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ignored)) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::stringstream cmdline(read_file(entry.path() / "cmdline"));
    for (std::string arg; std::getline(cmdline, arg, '\0');) {
      if (arg == argument) {
        found.push_back(std::stoi(name));
        break;
      }
    }
  }
  return found;
}

HolderWithChild::HolderWithChild(
    const std::function<std::vector<std::string>(std::vector<std::string>)>& dlock_command,
    const std::string& name, const std::string& pid_file) {
  dlock_ = std::make_unique<Process>(
      dlock_command({"run", name, "--", "sh", "-c",
                     "sleep 30 & echo $$ $! > " + pid_file + ".new && mv " + pid_file + ".new " +
                         pid_file + "; wait"}));
  EXPECT_TRUE(eventually([&] { return file_exists(pid_file); })) << "holder never got " << name;
  std::istringstream(read_file(pid_file)) >> shell_ >> child_;
}

HolderWithChild::~HolderWithChild() {
  for (const pid_t pid : {child_, shell_}) {
    if (pid > 0 && process_running(pid)) kill(pid, SIGKILL);
  }
}

std::string HolderWithChild::print_running_command() const {
  return "for p in " + std::to_string(shell_) + " " + std::to_string(child_) +
         "; do case $(cut -d' ' -f3 /proc/$p/stat 2>/dev/null) in ''|Z|X) ;; *) echo $p is "
         "running;; esac; done";
}

}  // namespace dlock::test
