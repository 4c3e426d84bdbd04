/* A link's delay for the tests' hosts of network namespaces: holds every
 * packet that iptables sends to NFQUEUE number QUEUE for DELAY_MS, then lets
 * it go, in the order it came. tc's netem does this in the kernel, but a
 * kernel may be built without it (this project's test machines are); the
 * netfilter queue is in every kernel that has iptables' NFQUEUE target.
 * It stops by itself after LIFETIME_S, or on SIGTERM or SIGINT; packets
 * still held then are let go, and it says how many it held in all (a test
 * checks its traffic went this way).
 *   strand-test-link-delay QUEUE DELAY_MS LIFETIME_S */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <linux/netlink.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* More than a 10 ms link at a gigabit ever holds in flight. */
#define HELD_MAX 65536

typedef struct {
	uint32_t id;
	int64_t due_us;
} held_packet;

static held_packet held[HELD_MAX];
static size_t head, count;
static unsigned long long delayed; /* in all */
static int64_t delay_us;
static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg, struct nfq_data *data, void *arg)
{
	struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(data);
	(void)msg;
	(void)arg;
	if (!ph)
		return 0;
	uint32_t id = ntohl(ph->packet_id);
	if (count == HELD_MAX) /* a full link drops, as a real one would */
		return nfq_set_verdict(qh, id, NF_DROP, 0, NULL);
	held[(head + count) % HELD_MAX] = (held_packet){.id = id, .due_us = now_us() + delay_us};
	count++;
	delayed++;
	return 0;
}

/* Lets go every packet whose time has come (all of them with all set). */
static void release(struct nfq_q_handle *qh, int all)
{
	int64_t now = now_us();
	while (count && (all || held[head].due_us <= now)) {
		nfq_set_verdict(qh, held[head].id, NF_ACCEPT, 0, NULL);
		head = (head + 1) % HELD_MAX;
		count--;
	}
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: strand-test-link-delay QUEUE DELAY_MS LIFETIME_S\n");
		return 64;
	}
	int queue = atoi(argv[1]);
	delay_us = (int64_t)atoi(argv[2]) * 1000;
	int64_t end_us = now_us() + (int64_t)atoi(argv[3]) * 1000000;
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	struct nfq_handle *h = nfq_open();
	if (!h) {
		perror("strand-test-link-delay: nfq_open");
		return 1;
	}
	struct nfq_q_handle *qh = nfq_create_queue(h, (uint16_t)queue, on_packet, NULL);
	if (!qh || nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0 || nfq_set_queue_maxlen(qh, HELD_MAX) < 0) {
		perror("strand-test-link-delay: binding the queue");
		return 1;
	}
	int fd = nfq_fd(h);
	int on = 1;
	/* A burst the socket's buffer cannot take is dropped by the kernel,
	 * as a link's would be: no error for that. */
	setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &on, sizeof(on));
	fprintf(stderr, "strand-test-link-delay: queue %d, %s ms\n", queue, argv[2]);
	fflush(stderr);

	char buf[65536];
	while (!stopping && now_us() < end_us) {
		int64_t wait_us = count ? held[head].due_us - now_us() : 100000;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int ready = poll(&p, 1, wait_us <= 0 ? 0 : (int)((wait_us + 999) / 1000));
		if (ready > 0) {
			ssize_t n;
			while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
				nfq_handle_packet(h, buf, (int)n);
		}
		release(qh, 0);
	}
	release(qh, 1);
	nfq_destroy_queue(qh);
	nfq_close(h);
	fprintf(stderr, "strand-test-link-delay: %llu packets delayed\n", delayed);
	return 0;
}
