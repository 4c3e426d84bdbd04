# strand-worker: the process every docker-backend worker runs. Built by
# deploy/build-images.sh from a root holding the binary, the example plugins
# and the shared libraries ldd names; nothing is pulled.
FROM scratch
COPY . /
ENV STRAND_PLUGIN_PATH=/usr/lib/strand
ENTRYPOINT ["/usr/bin/strand-worker"]
