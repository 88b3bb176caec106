//! The client's side: a connection to a `cuzk.v1.ProvingEngine` daemon (Bellhop's or
//! cuzk's) and requests built from Curio's payloads.

use anyhow::{Context as _, Result};
use bellhop_filecoin::curio;
use bellhop_proto::{
    v1::{proving_engine_client::ProvingEngineClient, Priority, SubmitProofRequest},
    MAX_MESSAGE_BYTES,
};
use hyper_util::rt::TokioIo;
use tonic::{
    metadata::{Ascii, MetadataValue},
    service::{interceptor::InterceptedService, Interceptor},
    transport::{Channel, Endpoint, Uri},
};

/// A connected client.
pub type Client = ProvingEngineClient<InterceptedService<Channel, Bearer>>;

/// Sends `authorization: Bearer TOKEN` with every request, where there is a token.
#[derive(Clone)]
pub struct Bearer(Option<MetadataValue<Ascii>>);

impl Interceptor for Bearer {
    fn call(&mut self, mut request: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(value) = &self.0 {
            request.metadata_mut().insert("authorization", value.clone());
        }
        Ok(request)
    }
}

/// Connects to the daemon at `address`: `host:port` (or `http://host:port`) or
/// `unix:///path`, with Curio's message limits.
pub async fn connect(address: &str) -> Result<Client> {
    connect_with_token(address, None).await
}

/// [`connect`], sending `token` as a bearer token with every request (`[daemon]
/// token_file`).
pub async fn connect_with_token(address: &str, token: Option<&str>) -> Result<Client> {
    let bearer = token
        .map(|token| format!("Bearer {token}").parse::<MetadataValue<Ascii>>())
        .transpose()
        .context("the token is not printable ASCII")?;
    let channel = match address.strip_prefix("unix://") {
        Some(path) => {
            let path = path.to_string();
            // The URI is not used: every connection goes to the socket.
            Endpoint::try_from("http://[::1]:0")?
                .connect_with_connector(tower::service_fn(move |_: Uri| {
                    let path = path.clone();
                    async move { tokio::net::UnixStream::connect(path).await.map(TokioIo::new) }
                }))
                .await
                .with_context(|| format!("cannot connect to {address}"))?
        }
        None => {
            let url = if address.contains("://") { address.to_string() } else { format!("http://{address}") };
            Endpoint::from_shared(url.clone())
                .with_context(|| format!("`{address}` is not an address (host:port or unix:///path)"))?
                .connect()
                .await
                .with_context(|| format!("cannot connect to {url}"))?
        }
    };
    Ok(ProvingEngineClient::with_interceptor(channel, Bearer(bearer))
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES))
}

/// The `SubmitProofRequest` carrying `request`, with the caller's id and priority.
pub fn submit_request(request: &curio::Request, request_id: &str, priority: Priority) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: request_id.to_string(),
        proof_kind: request.proof_kind.wire(),
        sector_size: 0,
        registered_proof: request.registered_proof,
        priority: priority.into(),
        vanilla_proof: request.vanilla_proof.clone(),
        vanilla_proofs: request.vanilla_proofs.clone(),
        sector_number: request.sector_number,
        miner_id: request.miner_id,
        randomness: request.randomness.clone(),
        partition_index: request.partition_index,
        comm_r_old: request.comm_r_old.clone(),
        comm_r_new: request.comm_r_new.clone(),
        comm_d_new: request.comm_d_new.clone(),
    }
}
