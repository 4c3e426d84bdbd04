# strand-gateway with its dashboard and strand-worker (for the local
# backend). Built by deploy/build-images.sh; nothing is pulled.
FROM scratch
COPY root/ /
# COPY makes everything root's: the database folder is the gateway's user's
# (a named volume mounted there starts with this owner).
COPY --chown=65534:65534 data /data
ENV STRAND_DB=/data/strand.db \
    STRAND_WEB_ROOT=/usr/share/strand/web \
    STRAND_PLUGIN_PATH=/usr/lib/strand \
    STRAND_WORKER_BIN=/usr/bin/strand-worker
VOLUME /data
# Not root: the Docker socket is reached through its group, given at run
# time (docker-compose.yml: user "65534:<the socket's gid>").
USER 65534:65534
ENTRYPOINT ["/usr/bin/strand-gateway"]
