/* The pod sandbox's process: holds the pod's namespaces open and does nothing else.
 * It sleeps until SIGINT or SIGTERM and reaps any child re-parented to it (it is PID 1
 * of the pod when the PID namespace is shared). Built static so the image needs no libc. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) { (void)sig; _exit(0); }

static void reap(int sig) {
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0) {}
}

int main(void) {
    struct sigaction quit = {.sa_handler = stop}, child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP};
    if (sigaction(SIGINT, &quit, NULL) || sigaction(SIGTERM, &quit, NULL) || sigaction(SIGCHLD, &child, NULL))
        return 1;
    for (;;) pause();
}
