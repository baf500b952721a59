#!/usr/bin/env bash
# Builds a local Docker image of redis-server from this machine's own
# binary and the shared libraries it links, FROM scratch, so that no
# registry is needed. Usage: scripts/redis-image.sh [image-name]
# (default baton-redis:local). Point the demo and the integration suite at
# another image with BATON_REDIS_IMAGE.
set -euo pipefail
image="${1:-baton-redis:local}"

bin="$(command -v redis-server || true)"
if [ -z "$bin" ]; then
	echo "redis-image: redis-server is not on PATH (Debian or Ubuntu: apt-get install redis-server)" >&2
	exit 1
fi

command -v docker >/dev/null 2>&1 || { echo "redis-image: docker is not on PATH" >&2; exit 1; }

root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT

# The binary, its loader and every library ldd resolves, at their paths.
mkdir -p "$root/usr/bin" "$root/tmp" "$root/data"
cp -L "$bin" "$root/usr/bin/redis-server"
ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | while read -r lib; do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done
# redis-server resolves no names and runs as root in the container; a
# passwd file keeps libc's user lookups quiet.
mkdir -p "$root/etc"
echo "root:x:0:0:root:/data:/usr/bin/redis-server" > "$root/etc/passwd"

cat > "$root/Dockerfile" <<'DOCKERFILE'
FROM scratch
COPY . /
WORKDIR /data
EXPOSE 6379
ENTRYPOINT ["/usr/bin/redis-server"]
CMD ["--protected-mode", "no", "--save", "", "--appendonly", "no"]
DOCKERFILE

version="$("$bin" --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')"
DOCKER_BUILDKIT=0 docker build --quiet --label "org.opencontainers.image.version=$version" -t "$image" "$root" >/dev/null
echo "built $image (redis-server $version from $bin)"
