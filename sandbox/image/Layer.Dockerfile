# A flow's packages over the praxis sandbox image (BASE): installed offline from the wheels
# in the build context; only the files the install added reach the final image, so the
# layer holds the flow's packages and nothing else (no wheels, no pip).
ARG BASE
FROM ${BASE} AS install
LABEL praxis.build-stage=install
USER root
COPY build/ /build/
RUN /opt/venv/bin/python /build/install.py

FROM ${BASE}
COPY --from=install /layer/ /
