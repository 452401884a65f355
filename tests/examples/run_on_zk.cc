// Runs one example program against the tests' throwaway ZooKeeper (ZkServer, zk_server.h), in
// a chroot of its own, and exits with the program's status: how ctest runs the examples on
// ZooKeeper.
//
//   run_on_zk PROGRAM     runs PROGRAM zk://127.0.0.1:PORT/CHROOT
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <iostream>
#include <stdexcept>
#include <string>

#include "zk_server.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: run_on_zk PROGRAM\n";
    return 2;
  }
  try {
    const std::string connect = dlock::test::ZkServer::shared().connect_string();
    const std::string chroot = dlock::test::unique_chroot();
    dlock::test::ensure_path(connect, chroot);
    const std::string url = "zk://" + connect + chroot;
    std::cout << argv[1] << " " << url << std::endl;

    const pid_t child = ::fork();
    if (child == 0) {
      ::execl(argv[1], argv[1], url.c_str(), static_cast<char*>(nullptr));
      std::perror(argv[1]);
      ::_exit(127);
    }
    int status = 0;
    if (child < 0 || ::waitpid(child, &status, 0) != child) throw std::runtime_error("fork failed");
    // Returning from main (not _exit) lets ZkServer stop the server.
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  } catch (const std::exception& e) {
    std::cerr << "run_on_zk: " << e.what() << "\n";
    return 1;
  }
}
