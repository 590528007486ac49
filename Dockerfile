# The vllm-triage image: the CLI, its patterns, nothing else. Used by
# deploy/watch/ (`vllm-triage watch` in the cluster) and usable for scan.
#
#   docker build -t vllm-triage:0.1.0 .
#
# Runs as a non-root user (65532) on a read-only root filesystem: the
# bytecode is compiled at build time and nothing is written at run time.
FROM python:3.12-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY triage ./triage
COPY patterns ./patterns
RUN python -m pip install --no-cache-dir --upgrade pip \
 && python -m pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.12-slim-bookworm
COPY --from=build /wheels /wheels
RUN python -m pip install --no-cache-dir /wheels/*.whl \
 && rm -rf /wheels \
 && python -m compileall -q "$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HOME=/tmp
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["vllm-triage"]
CMD ["watch", "--all-namespaces"]
