//! The AM side of `ContainerManagementProtocol`: start, stop and query containers on a node,
//! authenticating with that node's NMToken (one connection per call, as Hadoop's NM client does
//! by default).

use crate::credentials::Token;
use crate::error::{Result, YarnError};
use crate::ipc::{Auth, IpcConnection};
use crate::proto::*;

pub const PROTOCOL: &str = "org.apache.hadoop.yarn.api.ContainerManagementProtocolPB";

fn describe(f: &ContainerExceptionMapProto) -> String {
    let e = f.exception.clone().unwrap_or_default();
    let cid = f.container_id.as_ref().map(|c| c.to_hadoop_string()).unwrap_or_default();
    format!("{cid}: {}: {}", e.class_name.unwrap_or_default(), e.message.unwrap_or_default())
}

/// Starts `container` (as allocated) with `clc` on its node.
pub async fn start_container(
    container: &ContainerProto,
    nm_token: &Token,
    clc: ContainerLaunchContextProto,
) -> Result<()> {
    let node =
        container.node_id.as_ref().ok_or_else(|| YarnError::Codec("allocated container without a node".into()))?;
    let addr = crate::amrm::node_key(node);
    let conn = IpcConnection::connect(&addr, PROTOCOL, Auth::Token(nm_token)).await?;
    let req = StartContainersRequestProto {
        start_container_request: vec![StartContainerRequestProto {
            container_launch_context: Some(clc),
            container_token: container.container_token.clone(),
        }],
    };
    let r: StartContainersResponseProto = conn.call("startContainers", &req).await?;
    if let Some(f) = r.failed_requests.first() {
        return Err(YarnError::Remote {
            server: addr,
            method: "startContainers".into(),
            class: "container start failed".into(),
            message: describe(f),
        });
    }
    Ok(())
}

/// Stops containers on the node at `addr`.
pub async fn stop_containers(addr: &str, nm_token: &Token, ids: Vec<ContainerIdProto>) -> Result<()> {
    let conn = IpcConnection::connect(addr, PROTOCOL, Auth::Token(nm_token)).await?;
    let r: StopContainersResponseProto =
        conn.call("stopContainers", &StopContainersRequestProto { container_id: ids }).await?;
    match r.failed_requests.first() {
        Some(f) => Err(YarnError::Remote {
            server: addr.into(),
            method: "stopContainers".into(),
            class: "container stop failed".into(),
            message: describe(f),
        }),
        None => Ok(()),
    }
}

/// Statuses of containers on the node at `addr`.
pub async fn container_statuses(
    addr: &str,
    nm_token: &Token,
    ids: Vec<ContainerIdProto>,
) -> Result<Vec<ContainerStatusProto>> {
    let conn = IpcConnection::connect(addr, PROTOCOL, Auth::Token(nm_token)).await?;
    let r: GetContainerStatusesResponseProto =
        conn.call("getContainerStatuses", &GetContainerStatusesRequestProto { container_id: ids }).await?;
    Ok(r.status)
}
