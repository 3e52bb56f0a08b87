// Starting an external pluggable transport (a pt-spec managed client) as a child process, with the
// guarantees Foundation's Process cannot give: the child asks the kernel to SIGKILL it when the
// thread that forked it dies (PR_SET_PDEATHSIG, so a SIGKILLed postern leaves no plugin behind), it
// leads its own process group (so the plugin and anything it starts can be stopped together), no
// descriptor but its stdin/stdout/stderr survives exec, and signal dispositions are reset (postern
// ignores SIGINT/SIGTERM to watch them itself; ignored dispositions would survive exec).
//
// Between fork and exec only async-signal-safe calls are made. An exec failure is reported as the
// errno value written to `error_fd` (close-on-exec, so a successful exec writes nothing).
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static inline pid_t cspawn_managed_child(const char *path, char *const argv[], char *const envp[],
                                         int stdin_fd, int stdout_fd, int stderr_fd, int error_fd, pid_t parent) {
    pid_t pid = fork();
    if (pid != 0) return pid;
    int code = 0;
    if (setpgid(0, 0) != 0) goto fail;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) goto fail;
    // The parent may have died between fork and prctl; then nobody would ever kill us.
    if (getppid() != parent) _exit(127);
    if (dup2(stdin_fd, 0) < 0 || dup2(stdout_fd, 1) < 0 || dup2(stderr_fd, 2) < 0) goto fail;
    // Every other descriptor closes on exec (close_range's CLOSE_RANGE_CLOEXEC is 1 << 2; a kernel
    // without it leaves the flags as they are, and Postern opens its descriptors close-on-exec).
    (void)syscall(SYS_close_range, 3U, ~0U, 1U << 2);
    struct sigaction standard = {0};
    standard.sa_handler = SIG_DFL;
    for (int signal_number = 1; signal_number < 32; signal_number++) {
        if (signal_number != SIGKILL && signal_number != SIGSTOP) (void)sigaction(signal_number, &standard, 0);
    }
    sigset_t none;
    sigemptyset(&none);
    (void)sigprocmask(SIG_SETMASK, &none, 0);
    execve(path, argv, envp);
fail:
    code = errno;
    (void)!write(error_fd, &code, sizeof code);
    _exit(127);
}

int pipe2(int fds[2], int flags);

// pipe2 with O_CLOEXEC (a _GNU_SOURCE function Glibc's module does not export): no other child can
// inherit a plugin's pipe ends.
static inline int cspawn_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

// waitid(P_PID, pid, WEXITED | WNOWAIT): blocks until the child has ended but leaves it a zombie, so
// its process-group ID cannot be reused while the rest of the group is killed. Returns 0 or -1.
static inline int cspawn_wait_exited_without_reaping(pid_t pid) {
    siginfo_t info;
    return waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT);
}
