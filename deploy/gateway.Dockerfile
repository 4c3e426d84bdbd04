# strand-gateway with its dashboard and strand-worker (for the local
# backend). Built by deploy/build-images.sh; nothing is pulled.
FROM scratch
COPY . /
ENV STRAND_DB=/data/strand.db \
    STRAND_WEB_ROOT=/usr/share/strand/web \
    STRAND_PLUGIN_PATH=/usr/lib/strand \
    STRAND_WORKER_BIN=/usr/bin/strand-worker
VOLUME /data
ENTRYPOINT ["/usr/bin/strand-gateway"]
