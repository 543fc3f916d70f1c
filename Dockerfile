# condense-proxy: a static binary on a distroless base, run as non-root.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The version `condense-proxy version` prints: docker build --build-arg
# VERSION=$(git describe --tags --always --dirty). Empty: the build info's
# (the image is built without .git, so "devel").
ARG VERSION=
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/condense-proxy ./cmd/condense-proxy

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/condense-proxy /condense-proxy
USER nonroot:nonroot
EXPOSE 8080
# Every interface of the container (the default, 127.0.0.1:8080, would be
# unreachable through a published port).
ENV CONDENSE_LISTEN="0.0.0.0:8080"
# No upstream is assumed: give one (-e CONDENSE_UPSTREAM=http://litellm:4000),
# or the proxy refuses to start.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 CMD ["/condense-proxy", "health"]
ENTRYPOINT ["/condense-proxy"]
CMD ["serve"]
