#!/bin/sh
# Rebuilds docs/ from Debian's manual pages (see SOURCES.md): each page is
# rendered to text by man(1), its section titles become Markdown headings,
# and it is cut to the first MAXBYTES bytes at a line end. Needs the
# packages manpages (English) and manpages-zh (Chinese, extracted with
# `apt-get download manpages-zh && dpkg-deb -x manpages-zh_*.deb ZHROOT`).
# Usage: gen.sh ZHROOT   (writes ./docs: run from this folder. The whole
# pages of docs/retrieval.md: MAXBYTES=40000 sh gen.sh ZHROOT from a
# scratch folder)
set -eu
ZHROOT=${1:?usage: gen.sh ZHROOT}
MAXBYTES=${MAXBYTES:-3500}
EN="man7/capabilities.7 man7/cgroups.7 man7/namespaces.7 man7/inotify.7 man7/pipe.7 man7/futex.7
man7/symlink.7 man7/environ.7 man7/boot.7 man7/inode.7 man7/path_resolution.7 man7/time.7
man7/sem_overview.7 man7/shm_overview.7 man7/mq_overview.7 man7/pthreads.7 man7/sched.7
man7/signal-safety.7 man7/uri.7 man7/vdso.7 man7/keyrings.7 man7/user_namespaces.7 man7/hostname.7
man7/credentials.7 man7/cpuset.7 man5/fstab.5 man5/passwd.5 man5/hosts.5 man5/resolv.conf.5
man5/filesystems.5 man5/core.5 man2/fork.2 man2/execve.2 man2/mmap.2 man2/open.2 man2/poll.2
man2/ioctl.2 man2/chdir.2 man2/sendfile.2 man2/ptrace.2 man2/nanosleep.2 man2/madvise.2
man2/mlock.2 man2/flock.2 man2/dup.2 man2/wait.2 man2/brk.2 man2/reboot.2 man3/qsort.3
man3/malloc.3 man3/strtol.3 man3/getopt.3 man3/dlopen.3 man3/strftime.3 man3/crypt.3
man3/system.3 man3/atexit.3 man3/mkstemp.3 man3/bsearch.3 man3/syslog.3"
ZH="man1/tar.1 man1/chmod.1 man1/chown.1 man1/cp.1 man1/mv.1 man1/rm.1 man1/mkdir.1 man1/ln.1
man1/ls.1 man1/find.1 man1/grep.1 man1/sed.1 man1/sort.1 man1/uniq.1 man1/cut.1 man1/wc.1
man1/head.1 man1/tail.1 man1/df.1 man1/du.1 man1/date.1 man1/cal.1 man1/gzip.1 man1/bzip2.1
man1/ssh.1 man1/scp.1 man1/diff.1 man1/kill.1 man1/nice.1 man1/nohup.1 man1/timeout.1
man1/xargs.1 man1/tee.1 man1/md5sum.1 man1/base64.1 man1/iconv.1 man1/split.1 man1/touch.1
man1/uname.1 man1/uptime.1 man1/free.1 man1/file.1 man1/stat.1 man1/sleep.1 man1/who.1
man8/fdisk.8 man8/ping.8 man8/netstat.8 man8/route.8 man8/ifconfig.8 man8/shutdown.8
man8/tcpdump.8 man8/mkswap.8 man8/umount.8 man8/dmesg.8 man5/shells.5 man5/motd.5 man5/services.5"
mkdir -p docs
render() { # file title out
	MANWIDTH=80 LANG=C.UTF-8 timeout 20 man -l "$1" 2>/dev/null | col -bx | awk -v title="$2" '
		NR == 1 { print "# " title; next }
		/^[^ \t]/ { if (seen) print "\n## " $0 "\n"; seen = 1; next }
		{ sub(/^       /, ""); if (seen) print }' | cat -s | head -c "$MAXBYTES" | sed '$d' >"$3"
}
for p in $EN; do
	n=$(basename "$p"); render "/usr/share/man/$p.gz" "$n" "docs/$n.md"
done
for p in $ZH; do
	n=$(basename "$p"); render "$ZHROOT/usr/share/man/zh_CN/$p.gz" "$n" "docs/$n.md"
done
