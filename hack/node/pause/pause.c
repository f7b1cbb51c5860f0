/*
 * gpulab-pause: the real-node harness's pod sandbox image program (toolchain/node;
 * workplace only). Every pod's sandbox holds its namespaces with a process that does
 * nothing; the registry's pause image cannot be pulled on the offline GPU machine, so
 * the harness builds this one. As PID 1 of the pod it reaps orphaned children and exits 0
 * on SIGINT/SIGTERM.
 *
 * Build: cc -static -Os -s -o gpulab-pause pause.c
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_term(int sig) {
  (void)sig;
  _exit(0);
}

static void on_child(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "-v") == 0) {
    puts("gpulab-pause 1");
    return 0;
  }
  if (getpid() != 1) fprintf(stderr, "gpulab-pause: not PID 1, orphans will not be reaped\n");
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_term;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sa.sa_handler = on_child;
  sa.sa_flags = SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, NULL);
  for (;;) pause();
}
